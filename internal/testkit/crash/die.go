package crash

import (
	"context"
	"runtime"

	"github.com/jackc/pgx/v5"
)

// Die ends the calling goroutine as a killed process ends: the connections it holds are lost
// (see the package documentation), then runtime.Goexit. held may be empty, and nil entries are
// skipped. Die does not return.
func Die(held ...*pgx.Conn) {
	for _, conn := range held {
		if conn != nil {
			lose(conn)
		}
	}
	runtime.Goexit()
}

// lose closes conn's socket under it, then marks conn closed. The order matters: pgx's close
// sends Terminate, and on a socket already closed that write fails, so the server hears only the
// socket's end.
func lose(conn *pgx.Conn) {
	_ = conn.PgConn().Conn().Close()
	_ = conn.Close(context.Background())
}
