package clientaddr_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/cmd/internal/clientaddr"
)

func TestOf(t *testing.T) {
	t.Parallel()
	trusted, err := clientaddr.Parse("127.0.0.0/8, 10.0.0.0/8,192.0.2.7,fd00::/8")
	require.NoError(t, err)
	require.Equal(t, 4, trusted.Trusted())
	for _, tc := range []struct {
		name     string
		resolver *clientaddr.Resolver
		peer     string
		xff      []string
		want     string
	}{
		{"no proxy trusted: the peer, whatever the header", nil, "127.0.0.1:5000", []string{"203.0.113.9"}, "127.0.0.1"},
		{"an untrusted peer: its header is ignored", trusted, "198.51.100.1:5000", []string{"203.0.113.9"}, "198.51.100.1"},
		{"a trusted peer without a header", trusted, "127.0.0.1:5000", nil, "127.0.0.1"},
		{"a trusted peer names its client", trusted, "127.0.0.1:5000", []string{"203.0.113.9"}, "203.0.113.9"},
		{"a client's own hops stand left of the one its proxy appended", trusted, "127.0.0.1:5000",
			[]string{"198.51.100.66, 203.0.113.9"}, "203.0.113.9"},
		{"a chain of trusted proxies", trusted, "127.0.0.1:5000", []string{"203.0.113.9, 10.1.2.3", "192.0.2.7"}, "203.0.113.9"},
		{"a hop that is no address ends the walk", trusted, "127.0.0.1:5000", []string{"203.0.113.9, junk, 10.1.2.3"}, "10.1.2.3"},
		{"every hop trusted: the leftmost", trusted, "127.0.0.1:5000", []string{"10.9.9.9, 10.1.2.3"}, "10.9.9.9"},
		{"IPv6", trusted, "[fd00::1]:5000", []string{"2001:db8::5"}, "2001:db8::5"},
		{"an IPv4-mapped peer", trusted, "[::ffff:127.0.0.1]:5000", []string{"203.0.113.9"}, "203.0.113.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			require.Equal(t, tc.want, tc.resolver.Of(r))
		})
	}
}

func TestParseRefusesWhatIsNoAddress(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"10.0.0.0/33", "localhost", "10.0.0.0/8,x"} {
		_, err := clientaddr.Parse(bad)
		require.Error(t, err, bad)
	}
	r, err := clientaddr.Parse("")
	require.NoError(t, err)
	require.Zero(t, r.Trusted())
}
