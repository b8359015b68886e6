"""Price importers: one module per upstream price source."""
