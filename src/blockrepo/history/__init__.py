"""History: every change recorded per revision, the change feed and reads as of a past revision."""
