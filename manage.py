#!/usr/bin/env python
from config.cli import main

if __name__ == "__main__":
    main()
