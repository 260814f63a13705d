"""python -m mssql_cdc.cli"""

import sys

from mssql_cdc.cli import main

sys.exit(main())
