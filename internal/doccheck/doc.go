// Package doccheck holds the check that the repository's Markdown pages
// (README.md and docs/*.md) link only to files and headings that exist,
// by GitHub's rules for heading anchors. It has no code a program would
// import: its test is the check, and it must not grow any.
package doccheck
