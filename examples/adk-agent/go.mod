module github.com/trails-kg/trails/examples/adk-agent

go 1.26.5

require github.com/trails-kg/trails v0.0.0

replace github.com/trails-kg/trails => ../..
