package main

import "context"

func runTombstones(ctx context.Context, args []string) error { return nil }
