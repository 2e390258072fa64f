package govet

import "fmt"

func Say() {
	fmt.Printf("%d\n", "text") // want govet "format %d has arg \"text\" of wrong type string" staticcheck "Printf format %d has arg #1 of wrong type string"
}
