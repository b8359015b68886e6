"""Command line: ``main`` dispatches; one module per command parses, calls one
function and prints."""
