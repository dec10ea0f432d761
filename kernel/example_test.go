package kernel_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/drydockhq/drydock/kernel"
)

// Python state carries over between executions.
func Example() {
	ctx := context.Background()
	k := kernel.New(kernel.Config{Dir: "/workspace"}, slog.Default())
	if err := k.Start(ctx); err != nil {
		fmt.Println("no python:", err)
		return
	}
	defer k.Close()
	if _, err := k.Execute(ctx, kernel.Python, "x = 41", time.Minute); err != nil {
		fmt.Println(err)
		return
	}
	res, err := k.Execute(ctx, kernel.Python, "x + 1", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outputs[0].Text) // 42
}
