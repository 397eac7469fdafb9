#!/bin/sh
# Runs modwright (from PATH) as a KRM function.
exec modwright krm "$@"
