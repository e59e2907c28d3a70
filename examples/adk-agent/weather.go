package main

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// weatherTool is the name of the agent's one function tool.
const weatherTool = "get_weather"

// weatherArgs are the arguments of the weather tool.
type weatherArgs struct {
	City string `json:"city" jsonschema:"the city whose weather is asked"`
}

// forecast is what the weather tool returns.
type forecast struct {
	City    string `json:"city"`
	Sky     string `json:"sky"`
	Celsius int    `json:"celsius"`
}

// forecasts are the weather tool's fixed answers: the example runs without
// a network, and its output is the same on every run.
var forecasts = map[string]forecast{
	"Lisbon": {"Lisbon", "sunny", 21},
	"Porto":  {"Porto", "cloudy", 17},
	"Madrid": {"Madrid", "clear", 25},
}

// cityNames returns the cities the tool knows, sorted.
func cityNames() []string {
	var names []string
	for c := range forecasts {
		names = append(names, c)
	}
	slices.Sort(names)
	return names
}

// cityIn returns the first known city named in text.
func cityIn(text string) (string, bool) {
	at, city := -1, ""
	for _, c := range cityNames() {
		if i := strings.Index(strings.ToLower(text), strings.ToLower(c)); i >= 0 && (at < 0 || i < at) {
			at, city = i, c
		}
	}
	return city, at >= 0
}

// getWeather is the weather tool's function.
func getWeather(_ agent.Context, args weatherArgs) (forecast, error) {
	f, ok := forecasts[args.City]
	if !ok {
		return forecast{}, fmt.Errorf("no forecast for %q", args.City)
	}
	return f, nil
}

// newWeatherTool returns the weather tool.
func newWeatherTool() (tool.Tool, error) {
	return functiontool.New(functiontool.Config{
		Name:        weatherTool,
		Description: "Returns today's weather in a city.",
	}, getWeather)
}
