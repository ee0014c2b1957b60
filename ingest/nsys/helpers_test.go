package nsys

import "database/sql"

func openRW(path string) (*sql.DB, error) { return sql.Open("sqlite3", path) }
