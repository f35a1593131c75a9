"""What capacity costs: NodeOverlays on the catalog, offerings EC2 refused lately, a replacement's price and the
Replacement a command launches, and the rows of `nodeflow instance-types`.
"""
