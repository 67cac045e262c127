package worker

import (
	"context"
	"log/slog"
	"strings"
)

// riverLogger is the logger the worker gives River: logger, with River's periodic reports at
// debug rather than info. River logs each producer's job counts every 5s while jobs run ("…:
// Producer job counts") and each maintenance service's pass that changed anything ("…: Ran
// successfully", every 30s or so for the completed jobs the cleaner deletes); a busy worker
// would fill an info log with them. Everything else River logs keeps its level: its warnings
// and errors, a job that errored, the client's start and stop.
func riverLogger(logger *slog.Logger) *slog.Logger {
	return slog.New(quietRiverHandler{logger.Handler()})
}

// riverChatter reports whether msg is one of River's periodic reports.
func riverChatter(msg string) bool {
	return strings.HasSuffix(msg, ": Producer job counts") || strings.HasSuffix(msg, ": Ran successfully")
}

// quietRiverHandler passes records on to its handler, River's periodic reports at debug.
type quietRiverHandler struct {
	slog.Handler
}

func (h quietRiverHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && riverChatter(r.Message) {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietRiverHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietRiverHandler{h.Handler.WithAttrs(attrs)}
}

func (h quietRiverHandler) WithGroup(name string) slog.Handler {
	return quietRiverHandler{h.Handler.WithGroup(name)}
}
