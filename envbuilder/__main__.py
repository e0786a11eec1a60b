"""`python -m envbuilder` entry point."""

from envbuilder.cli import main

if __name__ == "__main__":
    main()
