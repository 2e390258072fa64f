package noctx

import "net/http"

func Fetch(url string) {
	resp, err := http.Get(url) // want noctx "net/http.Get must not be called"
	if err == nil {
		_ = resp.Body.Close()
	}
}
