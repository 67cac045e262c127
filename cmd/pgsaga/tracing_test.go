package main_test

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pgsaga/pgsaga/gateway/sim"
)

// otlpReceiver is a collector as small as a test needs: it decodes the OTLP/HTTP (protobuf)
// exports sent to /v1/traces and keeps their spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []receivedSpan
}

// receivedSpan is an exported span with the command (serve, worker …) that exported it.
type receivedSpan struct {
	command string
	*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a POST of protobuf to /v1/traces", http.StatusBadRequest)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var export coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &export); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			command := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "pgsaga.command" {
					command = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					r.spans = append(r.spans, receivedSpan{command: command, Span: sp})
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// find returns the spans exported by command named name whose attributes hold every pair of
// attrs (string values).
func (r *otlpReceiver) find(command, name string, attrs ...string) []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []receivedSpan
	for _, sp := range r.spans {
		if sp.command == command && sp.Name == name && hasAttrs(sp.Span, attrs...) {
			out = append(out, sp)
		}
	}
	return out
}

func hasAttrs(sp *tracepb.Span, pairs ...string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, kv := range sp.Attributes {
			if kv.Key == pairs[i] && kv.GetValue().GetStringValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The payment's trace survives a kill -9: a client sends POST /payments with a traceparent,
// `pgsaga serve` (exporting to the test's OTLP receiver) commits the payment's first phase and is
// killed while the gateway holds its charge, then `pgsaga worker` resumes the key. The phase
// serve exported and the worker's pgsaga.resume are both in the client's trace, children of the
// request span serve never got to end; the resume links to its River job's span, and the
// worker's call asks the gateway before charging: one charge.
func TestTraceFollowsAPaymentAcrossACrash(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	recv := newOTLPReceiver(t)
	env := []string{"DATABASE_URL=" + w.db.URL, "OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL,
		"OTEL_BSP_SCHEDULE_DELAY=50"} // export ended spans within 50ms: serve is about to die
	invoice := w.invoice("t1", 5000)

	// The gateway creates the charge, then holds its answer: serve is mid-call.
	_, err := w.sim.SetFaults(func(s *sim.Settings) { s.Latency = time.Minute })
	require.NoError(t, err)
	serve := start(t, env, true, "serve", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0", "--gateway-url", w.simURL)
	secret := apiKey(t, w.db.URL, "t1", "alice").Secret
	traceID, clientSpan := randomHex(16), randomHex(8)
	key := uuid.NewString()
	go func() {
		req, _ := http.NewRequest("POST", serve.url+"/payments", strings.NewReader(`{"invoice_id": "`+invoice+`", "amount": 2000}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("traceparent", "00-"+traceID+"-"+clientSpan+"-01")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitUntil(t, 30*time.Second, "the gateway to hold the charge", func() bool { return w.sim.TotalCharges() == 1 })
	waitUntil(t, 10*time.Second, "serve to export the payment's first phase", func() bool {
		return len(recv.find("serve", "pgsaga.phase")) == 1
	})
	require.NoError(t, serve.cmd.Process.Signal(syscall.SIGKILL))
	<-serve.done

	created := recv.find("serve", "pgsaga.phase")[0]
	require.Equal(t, traceID, hex.EncodeToString(created.TraceId), "serve honours the client's traceparent")
	request := created.ParentSpanId // pgsaga.request: never ended, never exported
	require.Empty(t, recv.find("serve", "pgsaga.request"), "a killed process does not end its request's span")

	_, err = w.sim.SetFaults(func(s *sim.Settings) { s.Latency = 0 })
	require.NoError(t, err)
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1`, key)
	worker := start(t, env, false, "worker", "--gateway-url", w.simURL, "--sweep-interval", "100ms")
	waitUntil(t, 60*time.Second, "the worker to finish the payment", func() bool {
		return w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'completed'`, key) == 1
	})
	require.Equal(t, 0, worker.stop(syscall.SIGTERM), worker.stderr.String()) // flushes its spans
	require.Equal(t, 1, w.sim.TotalCharges(), "one charge")

	resumes := recv.find("worker", "pgsaga.resume", "pgsaga.key", key, "pgsaga.resumed_by", "worker")
	require.Len(t, resumes, 1)
	resume := resumes[0]
	require.Equal(t, traceID, hex.EncodeToString(resume.TraceId), "the worker's resume is in the client's trace")
	require.Equal(t, request, resume.ParentSpanId, "a child of the request that claimed the key")
	jobs := recv.find("worker", "river.work/pgsaga_resume_batch")
	require.NotEmpty(t, jobs)
	linked := false
	for _, l := range resume.Links {
		for _, job := range jobs {
			linked = linked || (bytes.Equal(l.SpanId, job.SpanId) && bytes.Equal(l.TraceId, job.TraceId))
		}
	}
	require.True(t, linked, "the resume links to its River job's span")
	calls := recv.find("worker", "pgsaga.call", "pgsaga.call.outcome", "succeeded")
	require.Len(t, calls, 1)
	require.Equal(t, resume.SpanId, calls[0].ParentSpanId)
	phases := recv.find("worker", "pgsaga.phase", "pgsaga.recovery_point", "result_recorded")
	require.Len(t, phases, 1)
	require.Equal(t, resume.SpanId, phases[0].ParentSpanId)
}
