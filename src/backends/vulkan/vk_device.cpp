#include "backends/vulkan/vk_device.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>

#include "backends/vulkan/vk_check.hpp"
#include "backends/vulkan/vk_graph.hpp"
#include "backends/vulkan/vk_shaders.hpp"
#include "backends/vulkan/vk_stream.hpp"

pi_device_s::pi_device_s(VkPhysicalDevice pd, VkDevice dev, uint32_t family)
    : physical(pd), device(dev), queue_family(family) {
  using polyinfer::vk::check;
  vkGetDeviceQueue(device, family, 0, &queue);
  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sg;
  vkGetPhysicalDeviceProperties2(pd, &p2);
  limits = p2.properties.limits;
  features.max_shared = limits.maxComputeSharedMemorySize;
  features.max_workgroup =
      std::min(limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]);
  features.subgroup_size = sg.subgroupSize;
  // The subgroup reduction needs arithmetic ops in compute shaders and a
  // workgroup of 64 that splits into at most 64 subgroups (any size >= 1 does).
  features.subgroup_arith = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                            (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                            sg.subgroupSize >= 1;
  features.subgroup_lanes8 = features.subgroup_arith &&
                             (sg.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) &&
                             sg.subgroupSize >= 8 && sg.subgroupSize <= 64;

  timestamps = polyinfer::vk::timestamp_caps(pd, family);
  poll_fences = p2.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  const polyinfer::vk::ProfileMode mode = polyinfer::vk::profile_requested();
  profile = mode != polyinfer::vk::ProfileMode::kOff;
  if (profile) {
    profile_nodes = timestamps.usable && mode == polyinfer::vk::ProfileMode::kNodes;
    profile_span = timestamps.usable && mode == polyinfer::vk::ProfileMode::kSpan;
    if (!timestamps.usable) {
      std::fprintf(stderr,
                   "polyinfer vulkan: POLYINFER_VULKAN_PROFILE is set, but %s has no timestamps on "
                   "its compute queue: only the host time of each submit is profiled\n",
                   p2.properties.deviceName);
    }
  }

  allocator = std::make_unique<polyinfer::vk::Allocator>(pd, device, [this] { drop_recordings(); });

  // 0: the dispatch's parameter words (a uniform buffer); 1: src0..src3
  // (read-only in the shaders); 2: dst.
  // Parameters, the four sources, the destination, a fused dispatch's two
  // further destinations (shaders/common.glsl).
  VkDescriptorSetLayoutBinding b[4]{};
  b[0].binding = 0;
  b[0].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
  b[0].descriptorCount = 1;
  b[0].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  b[1] = b[0];
  b[1].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  b[1].binding = 1;
  b[1].descriptorCount = 4;
  b[2] = b[1];
  b[2].binding = 2;
  b[2].descriptorCount = 1;
  b[3] = b[1];
  b[3].binding = 3;
  b[3].descriptorCount = polyinfer::vk::kParamTensors - 5;
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dl.bindingCount = 4;
  dl.pBindings = b;
  check(vkCreateDescriptorSetLayout(device, &dl, nullptr, &set_layout),
        "vkCreateDescriptorSetLayout");
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout;
  check(vkCreatePipelineLayout(device, &pl, nullptr, &pipeline_layout), "vkCreatePipelineLayout");
  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = family;
  check(vkCreateCommandPool(device, &cp, nullptr, &command_pool), "vkCreateCommandPool");
}

pi_device_s::~pi_device_s() {
  vkDeviceWaitIdle(device);
  graphs.clear();
  allocator.reset();
  for (auto& [k, p] : pipelines) vkDestroyPipeline(device, p, nullptr);
  for (auto& [k, m] : modules) vkDestroyShaderModule(device, m, nullptr);
  if (command_pool) vkDestroyCommandPool(device, command_pool, nullptr);
  if (pipeline_layout) vkDestroyPipelineLayout(device, pipeline_layout, nullptr);
  if (set_layout) vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
  vkDestroyDevice(device, nullptr);
}

void pi_device_s::drop_recordings() {
  for (pi_stream_s* s : streams) {
    // A submit that fails (a lost device) has released its batch; the
    // buffer goes away regardless, and the error is the device's last.
    try {
      s->flush_batch();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  vkQueueWaitIdle(queue);
  graphs.clear();
}

VkPipeline pi_device_s::pipeline(const polyinfer::vk::PipelineKey& key) {
  using polyinfer::vk::check;
  if (auto it = pipelines.find(key); it != pipelines.end()) return it->second;
  VkShaderModule& mod = modules[key.shader];
  if (mod == VK_NULL_HANDLE) {
    const polyinfer::vk::ShaderCode* code = polyinfer::vk::find_shader(key.shader.c_str());
    if (code == nullptr)
      throw polyinfer::vk::VkError(PI_ERR_DEVICE, "no embedded shader named " + key.shader);
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = code->n_words * 4;
    mi.pCode = code->words;
    check(vkCreateShaderModule(device, &mi, nullptr, &mod), "vkCreateShaderModule");
  }
  VkSpecializationMapEntry entries[std::tuple_size_v<polyinfer::vk::SpecConstants>];
  for (uint32_t i = 0; i < key.n_spec; ++i) entries[i] = {i, 4 * i, 4};
  VkSpecializationInfo si{key.n_spec, entries, key.n_spec * 4u, key.spec.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = mod;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = key.n_spec ? &si : nullptr;
  ci.layout = pipeline_layout;
  VkPipeline p = VK_NULL_HANDLE;
  check(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &ci, nullptr, &p),
        "vkCreateComputePipelines");
  pipelines[key] = p;
  return p;
}
