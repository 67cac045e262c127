package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// maxResponseBytes bounds how much of a response body is read. A longer body
// is treated like a broken connection: the attempt is retried, and the
// server's replay answers it again.
const maxResponseBytes = 8 << 20

// Client submits intents with retries that keep the intent's key. It is safe
// for concurrent use.
type Client struct {
	config  *Config
	baseURL string
}

// NewClient returns a client for the server at config.BaseURL.
func NewClient(config *Config) (*Client, error) {
	config = config.withDefaults()
	if err := config.validate(); err != nil {
		return nil, err
	}
	return &Client{config: config, baseURL: strings.TrimRight(config.BaseURL, "/")}, nil
}

// outcome is what one answer means for the retry loop.
type outcome int

const (
	outcomeSucceeded outcome = iota // 2xx: done
	outcomeRejected                 // definitive non-success: done, do not retry
	outcomeRetry                    // may succeed later: retry with the same key
)

// classify sorts an answer by what the retry loop must do with it.
func classify(status int, code string) outcome {
	switch {
	case status >= 200 && status < 300:
		return outcomeSucceeded
	case status >= 500, status == http.StatusTooManyRequests:
		return outcomeRetry
	case status == http.StatusConflict && code == "request_in_progress":
		return outcomeRetry
	default:
		return outcomeRejected
	}
}

// Submit sends the intent until it gets a definitive answer, reusing the
// intent's key on every attempt.
//
// It returns a nil error on a 2xx answer (including a replay); a
// [*RejectedError] on a definitive non-success answer, which is never
// retried; and an [*OutcomeUnknownError] when the retry budget or ctx ran
// out first, in which case the intent may have taken effect and must be
// submitted again later with the same key. An invalid intent fails with
// [ErrInvalidIntent] before anything is sent. See [Result] for what it
// returns alongside an error.
func (c *Client) Submit(ctx context.Context, intent *Intent) (*Result, error) {
	if err := intent.Validate(); err != nil {
		return nil, err
	}
	key, err := httpsfv.Marshal(httpsfv.NewItem(intent.Key))
	if err != nil {
		return nil, fmt.Errorf("%w: error encoding key: %w", ErrInvalidIntent, err)
	}

	if _, err := url.Parse(c.baseURL + intent.Path); err != nil {
		return nil, fmt.Errorf("%w: path: %w", ErrInvalidIntent, err)
	}

	cfg := c.config
	deadline := cfg.Now().Add(cfg.MaxElapsed)

	result := &Result{}
	unknown := func(reason string, err error) (*Result, error) {
		return result, &OutcomeUnknownError{
			Attempts:   result.Attempts,
			LastStatus: result.Status,
			LastCode:   result.ErrorCode(),
			Reason:     reason,
			Err:        err,
		}
	}

	for {
		if err := ctx.Err(); err != nil {
			if result.Attempts == 0 {
				return nil, err
			}
			return unknown("context done", err)
		}

		result.Attempts++
		retryAfter, hasRetryAfter, sendErr := c.attempt(ctx, intent, key, deadline, result)
		if sendErr == nil {
			code := result.ErrorCode()
			switch classify(result.Status, code) {
			case outcomeSucceeded:
				return result, nil
			case outcomeRejected:
				p := parseProblem(result.Body)
				return result, &RejectedError{Status: result.Status, Code: p.Error, Message: p.Message}
			}
		}
		if err := ctx.Err(); err != nil {
			return unknown("context done", err)
		}

		if result.Attempts >= cfg.MaxAttempts {
			return unknown("max attempts reached", sendErr)
		}
		delay := cfg.RetryDelay(result.Attempts)
		if hasRetryAfter {
			delay = retryAfter
		}
		if remaining := deadline.Sub(cfg.Now()); delay >= remaining {
			if hasRetryAfter {
				return unknown(fmt.Sprintf("server asked to retry after %s, beyond the %s left of the budget", delay, remaining.Round(time.Millisecond)), sendErr)
			}
			return unknown("max elapsed time reached", sendErr)
		}

		cfg.Logger.DebugContext(ctx, "retrying request",
			slog.String("key", intent.Key),
			slog.Int("attempt", result.Attempts),
			slog.Int("status", result.Status),
			slog.Any("error", sendErr),
			slog.Duration("delay", delay),
		)
		if err := cfg.Sleep(ctx, delay); err != nil {
			return unknown("context done", err)
		}
	}
}

// attempt sends one request and records its answer in result. A non-nil
// error means no complete answer arrived (result.Status is then 0).
func (c *Client) attempt(ctx context.Context, intent *Intent, key string, deadline time.Time, result *Result) (retryAfter time.Duration, hasRetryAfter bool, err error) {
	result.Status, result.Header, result.Body, result.Replayed = 0, nil, nil, false

	timeout := c.config.RequestTimeout
	if remaining := deadline.Sub(c.config.Now()); remaining > 0 && remaining < timeout {
		timeout = remaining
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var body io.Reader
	if intent.Body != nil {
		body = bytes.NewReader(intent.Body)
	}
	req, err := http.NewRequestWithContext(ctx, intent.Method, c.baseURL+intent.Path, body)
	if err != nil {
		return 0, false, fmt.Errorf("%w: error building request: %w", ErrInvalidIntent, err)
	}
	for name, values := range intent.Header {
		req.Header[http.CanonicalHeaderKey(name)] = append([]string(nil), values...)
	}
	for name, values := range c.config.Header {
		req.Header[http.CanonicalHeaderKey(name)] = append([]string(nil), values...)
	}
	req.Header.Set(headerIdempotencyKey, key)
	if intent.Body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}

	resp, err := c.config.HTTPClient.Do(req)
	if err != nil {
		return 0, false, fmt.Errorf("error sending request: %w", err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return 0, false, fmt.Errorf("error reading response: %w", err)
	}
	if len(respBody) > maxResponseBytes {
		return 0, false, fmt.Errorf("error reading response: body exceeds %d bytes", maxResponseBytes)
	}

	result.Status = resp.StatusCode
	result.Header = resp.Header
	result.Body = respBody
	result.Replayed = strings.EqualFold(resp.Header.Get(headerIdempotentReplayed), "true")
	retryAfter, hasRetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), c.config.Now())
	return retryAfter, hasRetryAfter, nil
}
