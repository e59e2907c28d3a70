module github.com/trails-kg/trails/integrations/openaiagents

go 1.26.5

require (
	github.com/google/uuid v1.6.0
	github.com/nlpodyssey/openai-agents-go v0.1.0
	github.com/openai/openai-go/v2 v2.5.0
	github.com/trails-kg/trails v0.0.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.7.6 // indirect
	github.com/knakk/digest v0.0.0-20160404164910-fd45becddc49 // indirect
	github.com/knakk/rdf v0.0.0-20260317081859-15b52521cde6 // indirect
	github.com/knakk/sparql v0.0.0-20240119140508-255b851aa040 // indirect
	github.com/mattn/go-sqlite3 v1.14.32 // indirect
	github.com/tidwall/gjson v1.18.0 // indirect
	github.com/tidwall/match v1.2.0 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/text v0.40.0 // indirect
)

replace github.com/trails-kg/trails => ../..
