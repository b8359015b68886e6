"""`python -m exporter` runs the same CLI as the `llm-savings-exporter` script."""

from exporter.cli.main import main

raise SystemExit(main())
