package bodyclose

import "net/http"

func Status(c *http.Client, req *http.Request) int {
	resp, err := c.Do(req) // want bodyclose "response body must be closed"
	if err != nil {
		return 0
	}
	return resp.StatusCode
}
