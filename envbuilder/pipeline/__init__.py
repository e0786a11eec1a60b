"""The pipeline below the command line: spec -> resolution (with the default Python) -> plan ->
build -> certify, and the certificate lookup before an image runs. Plain functions that the
commands call (`up`, `build`, `fleet build`, `certify`, `run`, `check`); the CLI parses, calls
them and prints. Each step hands its result to the next; none reads an option or prints."""
