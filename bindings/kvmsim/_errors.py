"""Exceptions. ScenarioError is the C++ one (bad scenario, override or file)."""
from ._kvmsim import ScenarioError  # (a ValueError) re-exported by kvmsim

__all__ = ["ScenarioError", "KvmsimError", "SimulationError", "SimulationCrash", "RunTimeout"]


class KvmsimError(RuntimeError):
    """A run did not produce results. ``stderr`` holds the child's error output."""

    def __init__(self, message, stderr="", returncode=None):
        super().__init__(message)
        self.stderr = stderr
        self.returncode = returncode


class SimulationError(KvmsimError):
    """The CLI exited with an error other than bad input (exit code 1)."""


class SimulationCrash(KvmsimError):
    """The child process was killed by a signal (a crash, or killed from outside)."""


class RunTimeout(KvmsimError):
    """The run exceeded its ``timeout``; the child was killed."""
