-- The W3C traceparent of the request that claimed the key, when that request was traced
-- (saga.Config.TracerProvider): written by the claim itself, never changed after, read by the
-- statements that take a key over, so that the worker's resume, an operator's resume or
-- settlement and a retry's takeover join or link to that request's trace. NULL: claimed without
-- tracing. A nullable column without a default: adding it rewrites nothing, and a key claimed
-- without tracing stores nothing more than before.
ALTER TABLE pgsaga_key ADD COLUMN trace_context text;
