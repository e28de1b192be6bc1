"""Opening stores safely: directory handles, connections and their pool, discovery, caches."""
