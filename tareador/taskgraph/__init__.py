"""Task instances, their dependencies and the data objects that carry them."""

from tareador.taskgraph.model import DataObject, Dependency, Fragment, TaskTrace

__all__ = ["DataObject", "Dependency", "Fragment", "TaskTrace"]
