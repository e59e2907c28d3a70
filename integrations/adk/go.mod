module github.com/trails-kg/trails/integrations/adk

go 1.26.5

require github.com/trails-kg/trails v0.0.0

replace github.com/trails-kg/trails => ../..
