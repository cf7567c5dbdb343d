"""``python -m bookmark_client``: the ``bookmarks`` command line."""

import sys

from bookmark_client.cli import main

if __name__ == "__main__":
    sys.exit(main())
