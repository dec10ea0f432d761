package s3_test

import (
	"context"
	"fmt"
	"os"

	"github.com/drydockhq/drydock/artifact/s3"
)

// A MinIO on the same network, path-style, with the keys in
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
func ExampleOpen() {
	ctx := context.Background()
	st, err := s3.Open(ctx, "s3://drydock/artifacts?endpoint=http://minio.storage:9000&region=us-east-1&path_style=true", os.Getenv)
	if err != nil {
		fmt.Println(err)
		return
	}
	rc, err := st.Get(ctx, "0193ffff-0000-7000-8000-000000000001.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()
}
