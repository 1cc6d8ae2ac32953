"""The routing engines by the name `route --engine` takes, and the default.

All route every publication of a workload to completion and give the same arrivals, message by
message (tests/test_routing.py runs every protocol on each against the oracle); the hop rules
they evaluate are one set of functions (`routing.rules`).

* `memory` (the default, the memory regime): the routing tables, publications and arrivals in
  the driver process, routed by the compiled kernel and summarised with numpy
  (`routing.in_memory`); Spark reads the inputs and writes the results. The routing tables are
  capped as the compiled engine's are; the arrivals grow with the workload.
* `compiled` (the Spark regime): each Spark task carries its publications through every superstep in
  numba (`routing.compiled`), one Spark job a run whatever the number of supersteps; the
  routing tables are broadcast from the driver, which caps the subscriptions it takes.
* `supersteps`: the Pregel-style form (`routing.simulate`), every message one hop a superstep as
  DataFrame joins with the routing tables, a Spark job or two a superstep and nothing on the
  driver: for networks whose tables do not fit a driver, and the message-passing reading of the
  protocols that the design card asks for.
"""

from __future__ import annotations

from overlay import registry
from routing.compiled import simulate_compiled
from routing.simulate import simulate

# Named (with their summaries for --help) in overlay.registry; here, what runs each name. The
# memory regime (`routing.in_memory`) routes and summarises in the driver process: no Spark
# simulation to hand back, so the route job calls it itself.
MEMORY = "memory"
SPARK_ENGINES = {"compiled": simulate_compiled, "supersteps": simulate}
ENGINES = (MEMORY, *SPARK_ENGINES)
DEFAULT_ENGINE = registry.default_engine(registry.ROUTING_ENGINE)
if set(ENGINES) != set(registry.engines(registry.ROUTING_ENGINE)):
    raise ImportError("routing.engines and overlay.registry name different routing engines")
