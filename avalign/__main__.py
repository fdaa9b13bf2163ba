from avalign.cli import main

raise SystemExit(main())
