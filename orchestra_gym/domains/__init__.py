"""Domains: databases with tools over them (tau2-format toolkits and the ToolScale-synthetic generator)."""
