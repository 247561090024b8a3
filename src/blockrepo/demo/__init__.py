"""The demo landscape of `blockrepo serve --demo`: a small, realistic company (data) and its loader."""

from blockrepo.demo.loader import DemoLoadFailed, DemoResult, load_demo

__all__ = ["DemoLoadFailed", "DemoResult", "load_demo"]
