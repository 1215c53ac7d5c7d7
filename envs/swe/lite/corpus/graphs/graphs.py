"""Directed graphs as {node: [successors]} adjacency dicts: search, ordering, components."""


def nodes(graph):
    """Every node, including those that only appear as successors, sorted."""
    found = set(graph)
    for targets in graph.values():
        found.update(targets)
    return sorted(found)


def shortest_path(graph, start, goal):
    """The shortest path from start to goal as a list of nodes (breadth-first), or None."""
    if start == goal:
        return [start]
    previous = {start: None}
    frontier = [start]
    while frontier:
        next_frontier = []
        for node in frontier:
            for target in graph.get(node, []):
                if target in previous:
                    continue
                previous[target] = node
                if target == goal:
                    path = [goal]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return path[::-1]
                next_frontier.append(target)
        frontier = next_frontier
    return None


def distances(graph, start):
    """{node: number of edges from start} for every reachable node."""
    seen = {start: 0}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in graph.get(node, []):
            if target not in seen:
                seen[target] = seen[node] + 1
                queue.append(target)
    return seen


def topological_order(graph):
    """Nodes so that every edge points forward (smallest available node first); ValueError on a cycle."""
    indegree = {node: 0 for node in nodes(graph)}
    for targets in graph.values():
        for target in targets:
            indegree[target] += 1
    ready = sorted(node for node, degree in indegree.items() if degree == 0)
    order = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for target in graph.get(node, []):
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
                ready.sort()
    if len(order) < len(indegree):
        raise ValueError("graph has a cycle")
    return order


def has_cycle(graph):
    """True when the graph has a directed cycle."""
    try:
        topological_order(graph)
    except ValueError:
        return True
    return False


def components(graph):
    """Weakly connected components as sorted lists, ordered by their smallest node."""
    undirected = {node: set() for node in nodes(graph)}
    for node, targets in graph.items():
        for target in targets:
            undirected[node].add(target)
            undirected[target].add(node)
    seen, result = set(), []
    for node in sorted(undirected):
        if node in seen:
            continue
        group, stack = [], [node]
        seen.add(node)
        while stack:
            current = stack.pop()
            group.append(current)
            for other in undirected[current]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        result.append(sorted(group))
    return result
