"""`python -m agentrl` is the same as the `agentrl` command."""

from agentrl.cli import main

raise SystemExit(main())
