"""Chapter 6's studies: the head-to-head of every algorithm, the tuning maps and the noise study."""
