package runtimetest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/drydockhq/drydock"
)

// JupyterExecute runs code in a Jupyter kernel over its channels WebSocket
// (Jupyter's JSON message protocol) and returns the text of its
// execute_result; a kernel error is an error naming the exception.
func JupyterExecute(ctx context.Context, conn *websocket.Conn, code string) (string, error) {
	msgID := "drydock-test-" + drydock.RandomHex(6)
	req := map[string]any{
		"header": map[string]any{"msg_id": msgID, "username": "test", "session": "drydock-test",
			"msg_type": "execute_request", "version": "5.3", "date": time.Now().UTC().Format(time.RFC3339)},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "channel": "shell", "buffers": []any{},
		"content": map[string]any{"code": code, "silent": false, "store_history": false,
			"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true},
	}
	data, _ := json.Marshal(req)
	if err := conn.Write(ctx, websocket.MessageText, data); err != nil {
		return "", err
	}
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return "", err
		}
		var m struct {
			Header struct {
				MsgType string `json:"msg_type"`
			}
			ParentHeader struct {
				MsgID string `json:"msg_id"`
			} `json:"parent_header"`
			Content struct {
				Data  map[string]any
				Ename string
			}
		}
		if json.Unmarshal(msg, &m) != nil || m.ParentHeader.MsgID != msgID {
			continue
		}
		switch m.Header.MsgType {
		case "execute_result":
			s, _ := m.Content.Data["text/plain"].(string)
			return s, nil
		case "error":
			return "", fmt.Errorf("the kernel raised %s", m.Content.Ename)
		}
	}
}
