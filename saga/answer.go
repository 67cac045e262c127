package saga

import (
	"errors"
	"net/http"
	"time"
)

// How every error Run and RunTx return is answered: its HTTP status, its stable code, its message
// for people, its Retry-After, and its outcome for metrics. The handler writes it, the metrics
// count it: one rule, here.

// errorAnswer is the answer to an error of Run or RunTx.
type errorAnswer struct {
	status  int
	code    string
	message string
	// retryAfter, when positive, is the answer's Retry-After.
	retryAfter time.Duration
	outcome    RequestOutcome
}

// answerError is the one place an error's answer is decided.
func answerError(err error) errorAnswer {
	var (
		expired    *KeyExpiredError
		inProgress *InProgressError
		parked     *ParkedError
		invalid    *InvalidRequestError
		temporary  *TransientError
	)
	switch {
	case errors.Is(err, ErrKeyReused):
		return errorAnswer{status: http.StatusUnprocessableEntity, code: CodeKeyReused, message: ErrKeyReused.Error(),
			outcome: outcomeMismatch}
	case errors.As(err, &expired):
		return errorAnswer{status: http.StatusGone, code: codeKeyExpired, message: err.Error(), outcome: outcomeExpired}
	case errors.As(err, &inProgress):
		return errorAnswer{status: http.StatusConflict, code: codeRequestInProgress, message: msgInProgress,
			retryAfter: max(inProgress.RetryAfter, time.Nanosecond), outcome: outcomeInProgress}
	case errors.As(err, &parked):
		return errorAnswer{status: http.StatusServiceUnavailable, code: CodeOperationParked, message: msgParked,
			outcome: outcomeParked}
	case errors.Is(err, errInvalidJSON):
		return errorAnswer{status: http.StatusBadRequest, code: CodeInvalidJSON, message: err.Error(), outcome: outcomeRejected}
	case errors.As(err, &invalid):
		return errorAnswer{status: http.StatusBadRequest, code: CodeInvalidRequest, message: invalid.Error(),
			outcome: outcomeRejected}
	case errors.As(err, &temporary):
		return errorAnswer{status: http.StatusServiceUnavailable, code: CodeTemporarilyUnavailable,
			message:    "the request could not be completed now; retry with the same Idempotency-Key",
			retryAfter: max(temporary.RetryAfter, time.Nanosecond), outcome: outcomeUnavailable}
	}
	return errorAnswer{status: http.StatusInternalServerError, code: CodeInternal, message: "internal error", outcome: outcomeError}
}
