"""`python -m lwc_trio` runs the `lwc` command."""

from lwc_trio.cli.main import main

raise SystemExit(main())
