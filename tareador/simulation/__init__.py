"""The two machine models: the list scheduler of ``tareador simulate`` (an idealised task
runtime over a task graph) and the Dimemas engine of ``tareador replay`` (any Dimemas trace on a
machine of nodes, links and buses), and the machine files both read."""
