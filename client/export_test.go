package client

import "time"

// FastRetries shortens c's reconnect, idle and poll delays so tests of those
// paths take milliseconds.
func FastRetries(c *Client, idle time.Duration) *Client {
	c.backoffMin, c.backoffMax = 5*time.Millisecond, 20*time.Millisecond
	c.streamIdle = idle
	c.pollMin, c.pollMax = 5*time.Millisecond, 20*time.Millisecond
	return c
}
