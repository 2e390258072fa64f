package unused

func helper() {} // want unused "func helper is unused"
