"""blockrepo: an open repository for enterprise-architecture planning data."""

__version__ = "0.1.0"
API_VERSION = "7.4"
SUPPORTED_API_VERSIONS = ("7.4",)
