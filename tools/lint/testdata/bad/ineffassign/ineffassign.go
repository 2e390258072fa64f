package ineffassign

func Pick(a int) int {
	n := a // want ineffassign "ineffectual assignment to n" staticcheck "this value of n is never used"
	n = 2
	return n
}
