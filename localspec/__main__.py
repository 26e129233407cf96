from localspec.cli import main

raise SystemExit(main())
