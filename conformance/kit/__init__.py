"""The conformance kit: any implementation, in any language, checked against a spec through a driver.

A driver is a program that speaks the protocol of docs/driver-protocol.md over its standard input and
output (protocol.py: the messages, their JSON Schemas in conformance/schemas/driver-*.schema.json).
driver.py runs driver processes (and restarts them after a crash or a timeout), replay.py replays a
state graph through a pool of them, python_driver.py exposes impl/ through the protocol.
"""
