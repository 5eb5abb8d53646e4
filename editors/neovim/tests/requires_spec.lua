-- The plugin's modules have no require cycle, counting the requires inside functions (which hide a cycle
-- from the loader but not from the reader): each module can be read and tested with only what is below it.
local H = require('helpers')

local R = {}

--- Module name of a plugin file: lua/stepwise/x.lua -> stepwise.x, lua/stepwise/init.lua -> stepwise,
--- lsp/stepwise.lua -> lsp/stepwise (a config file, which nothing requires).
function R.module_of(rel)
  local lua = rel:match('^lua/(.+)%.lua$')
  if lua then
    return (lua:gsub('/init$', ''):gsub('/', '.'))
  end
  return (rel:gsub('%.lua$', ''))
end

--- Every `require('stepwise…')` of a source, wherever it stands (top level or inside a function); line
--- comments are left out.
---@return string[]
function R.requires(text)
  local out, seen = {}, {}
  for line in (text .. '\n'):gmatch('(.-)\n') do
    local code = line:gsub('%-%-.*$', '')
    for name in code:gmatch('require%s*%(?%s*[\'"](stepwise[%w_.]*)[\'"]') do
      if not seen[name] then
        seen[name] = true
        out[#out + 1] = name
      end
    end
  end
  table.sort(out)
  return out
end

--- Cycles of a graph { module = { required, ... } }, each as `a -> b -> a`: those a depth-first search
--- meets (empty exactly when the graph has none); the same cycle met from another module is not repeated.
---@return string[]
function R.cycles(graph)
  local found, seen = {}, {}
  local color, stack = {}, {}
  local function visit(m)
    color[m] = 'grey'
    stack[#stack + 1] = m
    for _, dep in ipairs(graph[m] or {}) do
      if color[dep] == 'grey' then
        local from
        for i = #stack, 1, -1 do
          if stack[i] == dep then
            from = i
            break
          end
        end
        local path = vim.list_slice(stack, from, #stack)
        -- one name per cycle: rotated to start at its smallest module
        local low = 1
        for i, p in ipairs(path) do
          if p < path[low] then
            low = i
          end
        end
        local rot = vim.list_extend(vim.list_slice(path, low, #path), vim.list_slice(path, 1, low - 1))
        rot[#rot + 1] = rot[1]
        local key = table.concat(rot, ' -> ')
        if not seen[key] then
          seen[key] = true
          found[#found + 1] = key
        end
      elseif not color[dep] then
        visit(dep)
      end
    end
    stack[#stack] = nil
    color[m] = 'black'
  end
  local names = vim.tbl_keys(graph)
  table.sort(names)
  for _, m in ipairs(names) do
    if not color[m] then
      visit(m)
    end
  end
  table.sort(found)
  return found
end

--- The plugin's require graph, from its files.
function R.plugin_graph(dir)
  local graph = {}
  for _, rel in ipairs(vim.fn.globpath(dir, 'lua/**/*.lua', false, true)) do
    rel = rel:sub(#dir + 2)
    graph[R.module_of(rel)] = R.requires(H.read(dir .. '/' .. rel))
  end
  for _, rel in ipairs(vim.fn.globpath(dir, 'lsp/*.lua', false, true)) do
    rel = rel:sub(#dir + 2)
    graph[R.module_of(rel)] = R.requires(H.read(dir .. '/' .. rel))
  end
  return graph
end

return H.spec({
  {
    name = 'requires: the cycle finder sees a cycle through a require inside a function, and none where none is',
    fn = function()
      H.eq('stepwise.chat', R.module_of('lua/stepwise/chat.lua'), 'module of a file')
      H.eq('stepwise', R.module_of('lua/stepwise/init.lua'), 'module of init.lua')
      local a = "local b = require('stepwise.b')\n-- require('stepwise.z') in a comment\n"
      local b = 'local M = {}\nfunction M.f()\n  return require "stepwise.c".g()\nend\n'
      local c = "local function g() return require('stepwise.a') end\nlocal util = require('stepwise')\n"
      H.eq({ 'stepwise.b' }, R.requires(a), 'a comment is not a require')
      H.eq({ 'stepwise.c' }, R.requires(b), 'a require inside a function, without parentheses')
      local graph = { ['stepwise.a'] = R.requires(a), ['stepwise.b'] = R.requires(b), ['stepwise.c'] = R.requires(c), stepwise = {} }
      H.eq({ 'stepwise.a -> stepwise.b -> stepwise.c -> stepwise.a' }, R.cycles(graph), 'the cycle, once')
      graph['stepwise.c'] = { 'stepwise' }
      H.eq({}, R.cycles(graph), 'no cycle once c requires only the bottom')
      H.eq({ 'x -> x', 'y -> z -> y' }, R.cycles({ x = { 'x' }, y = { 'z' }, z = { 'y' } }), 'two cycles')
    end,
  },
  {
    name = 'requires: no require cycle in the plugin, counting requires inside functions',
    fn = function()
      local dir = vim.g.stepwise_plugin_dir
      local graph = R.plugin_graph(dir)
      H.truthy(#vim.tbl_keys(graph) >= 15, 'the plugin modules were found: ' .. vim.inspect(vim.tbl_keys(graph)))
      H.truthy(vim.tbl_contains(graph['stepwise.handlers'] or {}, 'stepwise.client'), 'the requires were read (handlers requires client)')
      local cycles = R.cycles(graph)
      if #cycles > 0 then
        H.fail('require cycles:\n  ' .. table.concat(cycles, '\n  '))
      end
    end,
  },
})
