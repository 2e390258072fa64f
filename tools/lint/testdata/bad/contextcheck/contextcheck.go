package contextcheck

import "context"

func wait(ctx context.Context) { <-ctx.Done() }

func Handle(ctx context.Context) {
	wait(context.Background()) // want contextcheck "Non-inherited new context"
}
