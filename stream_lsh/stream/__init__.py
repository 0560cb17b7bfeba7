"""The streaming layer: Kafka topics, Faust agents and tables around the pure core."""
