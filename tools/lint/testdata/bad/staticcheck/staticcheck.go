// Package staticcheck holds one finding of each family the settings keep
// (SA, S, ST) and one of a check they turn off (ST1003: no_underscores).
package staticcheck

import "strings"

func has(s string, ok bool) bool {
	if ok == true { // want staticcheck "should omit comparison to bool constant"
		return true
	}
	strings.ToUpper(s) // want staticcheck "ToUpper doesn.t have side effects"
	return false
}

type thing struct{}

func (a thing) one() {} // want staticcheck "methods on the same type should have the same receiver name"

func (b thing) two() {}

var bad_name = 1 // ST1003 is off

var _ = bad_name
var _ = thing.one
var _ = thing.two
var _ = has
