"""delta-rs cold load + add actions of TABLE, with the count and max(id) its statistics give."""

import json
import sys
import time

t0 = time.perf_counter()
from deltalake import DeltaTable  # noqa: E402 - its import is timed

imp = time.perf_counter() - t0
t = time.perf_counter()
dt = DeltaTable(sys.argv[1])
load = time.perf_counter() - t
t = time.perf_counter()
a = dt.get_add_actions(flatten=True)
adds = time.perf_counter() - t
n = a.num_rows
t = time.perf_counter()
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

a = pa.table(a)
cols = a.schema.names
cnt = pc.sum(a.column("num_records")).as_py() if "num_records" in cols else None
mx = pc.max(a.column("max.id")).as_py() if "max.id" in cols else None
agg = time.perf_counter() - t
print(
    "RESULT "
    + json.dumps(
        dict(
            import_s=imp,
            load_s=load,
            add_actions_s=adds,
            files=n,
            agg_s=agg,
            count=cnt,
            max_id=mx,
            total_s=time.perf_counter() - t0,
        )
    )
)
