module github.com/pgsaga/pgsaga/gateway/stripe

go 1.26.0

require (
	github.com/pgsaga/pgsaga v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	github.com/stripe/stripe-go/v85 v85.0.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.43.0 // indirect
)

// Developed beside the library in this repository (go.work lists every module).
replace github.com/pgsaga/pgsaga => ../..
