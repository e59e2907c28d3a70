module github.com/trails-kg/trails/integrations/mcp

go 1.26.5

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/knakk/rdf v0.0.0-20260317081859-15b52521cde6
	github.com/trails-kg/trails v0.0.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/knakk/digest v0.0.0-20160404164910-fd45becddc49 // indirect
	github.com/knakk/sparql v0.0.0-20240119140508-255b851aa040 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

replace github.com/trails-kg/trails => ../..
