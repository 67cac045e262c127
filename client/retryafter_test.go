package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		value  string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"5", 5 * time.Second, true},
		{" 5 ", 5 * time.Second, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sunday, 01-Mar-26 12:01:00 GMT", time.Minute, true},
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true}, // in the past: now
		{"99999999999999999999", 0, false},
		{"9999999999999", time.Duration(1<<63-1) / time.Second * time.Second, true},
	} {
		got, ok := parseRetryAfter(tc.value, now)
		require.Equal(t, tc.wantOK, ok, "%q", tc.value)
		require.Equal(t, tc.want, got, "%q", tc.value)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		code   string
		want   outcome
	}{
		{200, "", outcomeSucceeded},
		{201, "", outcomeSucceeded},
		{204, "", outcomeSucceeded},
		{302, "", outcomeRejected},
		{400, "invalid_json", outcomeRejected},
		{409, "request_in_progress", outcomeRetry},
		{409, "order_already_completed", outcomeRejected},
		{409, "", outcomeRejected},
		{422, "idempotency_key_reused", outcomeRejected},
		{429, "", outcomeRetry},
		{500, "", outcomeRetry},
		{503, "operation_parked", outcomeRetry},
	} {
		require.Equal(t, tc.want, classify(tc.status, tc.code), "%d %s", tc.status, tc.code)
	}
}
